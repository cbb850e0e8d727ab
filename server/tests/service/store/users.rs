//! [`UserStore`]: accounts, tokens and sessions, secrets, endpoints, e-mail confirmation.

use super::{TestStore, add_user, user_record};
use std::sync::Arc;
use wachet::model::{MessagingServiceType, NotificationEndpoint};
use wachet_server::store::*;

both!(a_user_is_found_by_email_and_id, |store: Arc<
    dyn TestStore,
>| async move {
    assert_eq!(store.user_count().await.unwrap(), 0);
    let user = user_record("ada@example.com");
    store.create_user(&user).await.unwrap();
    let by_email = store
        .user_by_email("ada@example.com")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(by_email.id, user.id);
    assert_eq!(by_email.password_hash, user.password_hash);
    assert_eq!(by_email.api_key_hash, user.api_key_hash);
    assert_eq!(by_email.webhook_secret, user.webhook_secret);
    assert_eq!(by_email.created_at, user.created_at);
    let by_id = store.user_by_id(&user.id).await.unwrap().unwrap();
    assert_eq!(by_id.email, "ada@example.com");
    assert!(
        store
            .user_by_email("bob@example.com")
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.user_by_id(&new_id()).await.unwrap().is_none());
    assert_eq!(store.user_count().await.unwrap(), 1);
});

both!(an_email_address_is_taken_once, |store: Arc<
    dyn TestStore,
>| async move {
    add_user(&*store, "ada@example.com").await;
    match store.create_user(&user_record("ada@example.com")).await {
        Err(StoreError::Invalid { field, .. }) => assert_eq!(field, "email"),
        other => panic!("a second user with the address: {other:?}"),
    }
    assert_eq!(store.user_count().await.unwrap(), 1);
});

both!(the_paging_secret_is_made_once, |store: Arc<
    dyn TestStore,
>| async move {
    let first = store.paging_secret().await.unwrap();
    assert!(first.len() >= 32);
    assert_eq!(store.paging_secret().await.unwrap(), first);
});

both!(a_token_works_until_it_expires, |store: Arc<
    dyn TestStore,
>| async move {
    let user = add_user(&*store, "ada@example.com").await;
    let now = now_millis();
    let token = TokenRecord {
        hash: "a".repeat(64),
        user_id: user.clone(),
        issued_at: now,
        expires_at: now + 60_000,
    };
    store.insert_token(&token).await.unwrap();
    assert_eq!(
        store.token_owner(&token.hash, now).await.unwrap(),
        Some((user.clone(), now + 60_000))
    );
    assert_eq!(
        store.token_owner(&token.hash, now + 60_000).await.unwrap(),
        None
    );
    assert_eq!(store.token_owner(&"b".repeat(64), now).await.unwrap(), None);
    // Issuing a token drops the expired ones.
    let later = TokenRecord {
        hash: "c".repeat(64),
        user_id: user.clone(),
        issued_at: now + 120_000,
        expires_at: now + 180_000,
    };
    store.insert_token(&later).await.unwrap();
    assert_eq!(store.session_seen(&token.hash, now).await.unwrap(), None);
});

both!(a_session_remembers_its_last_use, |store: Arc<
    dyn TestStore,
>| async move {
    let user = add_user(&*store, "ada@example.com").await;
    let now = now_millis();
    let hash = "d".repeat(64);
    store
        .insert_token(&TokenRecord {
            hash: hash.clone(),
            user_id: user,
            issued_at: now,
            expires_at: now + 60_000,
        })
        .await
        .unwrap();
    assert_eq!(store.session_seen(&hash, now).await.unwrap(), Some(None));
    store.touch_session(&hash, now + 5).await.unwrap();
    assert_eq!(
        store.session_seen(&hash, now).await.unwrap(),
        Some(Some(now + 5))
    );
    assert_eq!(store.session_seen(&hash, now + 60_000).await.unwrap(), None);
    store.delete_token(&hash).await.unwrap();
    assert_eq!(store.session_seen(&hash, now).await.unwrap(), None);
    assert_eq!(store.token_owner(&hash, now).await.unwrap(), None);
});

both!(
    tokens_end_with_invalidation_and_a_new_password,
    |store: Arc<dyn TestStore>| async move {
        let ada = add_user(&*store, "ada@example.com").await;
        let bob = add_user(&*store, "bob@example.com").await;
        let now = now_millis();
        for (hash, user) in [("1", &ada), ("2", &ada), ("3", &ada), ("4", &bob)] {
            store
                .insert_token(&TokenRecord {
                    hash: hash.repeat(64),
                    user_id: user.clone(),
                    issued_at: now,
                    expires_at: now + 60_000,
                })
                .await
                .unwrap();
            // Read once so a cache, if any, holds it.
            assert!(
                store
                    .token_owner(&hash.repeat(64), now)
                    .await
                    .unwrap()
                    .is_some()
            );
        }
        store
            .set_password(&ada, "new-hash", &"1".repeat(64))
            .await
            .unwrap();
        assert_eq!(
            store.user_by_id(&ada).await.unwrap().unwrap().password_hash,
            "new-hash"
        );
        assert!(
            store
                .token_owner(&"1".repeat(64), now)
                .await
                .unwrap()
                .is_some()
        );
        assert!(
            store
                .token_owner(&"2".repeat(64), now)
                .await
                .unwrap()
                .is_none()
        );
        store.invalidate_tokens(&ada).await.unwrap();
        assert!(
            store
                .token_owner(&"1".repeat(64), now)
                .await
                .unwrap()
                .is_none()
        );
        assert!(
            store
                .token_owner(&"3".repeat(64), now)
                .await
                .unwrap()
                .is_none()
        );
        // Another user's tokens stay.
        assert!(
            store
                .token_owner(&"4".repeat(64), now)
                .await
                .unwrap()
                .is_some()
        );
        assert!(matches!(
            store.set_password(&new_id(), "x", "").await,
            Err(StoreError::NotFound)
        ));
    }
);

both!(secrets_and_endpoints_are_replaced, |store: Arc<
    dyn TestStore,
>| async move {
    let ada = add_user(&*store, "ada@example.com").await;
    let endpoints = vec![NotificationEndpoint::new(
        MessagingServiceType::Webhook,
        Some("https://hooks.example/a".into()),
    )];
    store
        .set_notification_endpoints(&ada, &endpoints)
        .await
        .unwrap();
    store.set_api_key(&ada, &"e".repeat(64)).await.unwrap();
    store.set_webhook_secret(&ada, "whsec-2").await.unwrap();
    let user = store.user_by_id(&ada).await.unwrap().unwrap();
    assert_eq!(user.notification_endpoints, endpoints);
    assert_eq!(user.api_key_hash, "e".repeat(64));
    assert_eq!(user.webhook_secret, "whsec-2");
    let nobody = new_id();
    assert!(matches!(
        store.set_api_key(&nobody, "x").await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.set_webhook_secret(&nobody, "x").await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.set_notification_endpoints(&nobody, &[]).await,
        Err(StoreError::NotFound)
    ));
});

both!(an_address_waits_for_its_confirmation, |store: Arc<
    dyn TestStore,
>| async move {
    let ada = add_user(&*store, "ada@example.com").await;
    let bob = add_user(&*store, "bob@example.com").await;
    store
        .request_email_confirmation(&ada, "ops@example.com", false)
        .await
        .unwrap();
    // Asked again within the hour: nothing to do, or an error when asked explicitly.
    store
        .request_email_confirmation(&ada, "ops@example.com", false)
        .await
        .unwrap();
    match store
        .request_email_confirmation(&ada, "ops@example.com", true)
        .await
    {
        Err(StoreError::Invalid { field, .. }) => assert_eq!(field, "address"),
        other => panic!("an explicit resend within the hour: {other:?}"),
    }
    let addresses = store.email_addresses(&ada).await.unwrap();
    assert_eq!(addresses.len(), 1);
    assert_eq!(addresses[0].address, "ops@example.com");
    assert!(!addresses[0].confirmed);
    assert!(store.email_addresses(&bob).await.unwrap().is_empty());
    // No code was mailed yet, so none confirms.
    assert_eq!(
        store.confirm_email(&ada, &"f".repeat(64)).await.unwrap(),
        None
    );
});

both!(at_most_twenty_addresses_wait, |store: Arc<
    dyn TestStore,
>| async move {
    let ada = add_user(&*store, "ada@example.com").await;
    for n in 0..20 {
        store
            .request_email_confirmation(&ada, &format!("a{n}@example.com"), false)
            .await
            .unwrap();
    }
    match store
        .request_email_confirmation(&ada, "a20@example.com", false)
        .await
    {
        Err(StoreError::Invalid { field, .. }) => assert_eq!(field, "notificationEndpoints"),
        other => panic!("a 21st waiting address: {other:?}"),
    }
    assert_eq!(store.email_addresses(&ada).await.unwrap().len(), 20);
});
